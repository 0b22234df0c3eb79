"""The command-line commands, one module each: ``add_parser(commands)`` adds its parser(s) to the
``optmap`` sub-command set and returns ``{name: function}``; a function takes the parsed arguments
and returns the exit code. Heavy modules are imported inside the functions, so ``--help`` is fast.
"""

MODULES = ("run", "compare", "info", "calibrate", "sweep", "report")
