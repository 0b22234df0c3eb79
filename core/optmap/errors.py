"""The one exception type users see: a clear one-line message, exit code 2 from the CLI."""


class OptmapError(Exception):
    """A user-facing error: what went wrong, where, and how to fix it, in one line.

    The CLI prints ``error: <message>`` and exits with code 2. Internal bugs raise any other
    exception and keep their traceback. ``problems`` lists every problem found, one line each,
    when a check found several (``optmap validate`` prints them all); the message is the first.
    """

    def __init__(self, message: object = "", problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems) if problems else [str(message)]


def did_you_mean(name: str, choices) -> str:
    """A ' (did you mean 'x'?)' suffix for a misspelt name, or a list of the valid names."""
    import difflib

    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return f"; did you mean '{close[0]}'?"
    return f"; valid names: {', '.join(choices) if choices else '(none registered)'}"
