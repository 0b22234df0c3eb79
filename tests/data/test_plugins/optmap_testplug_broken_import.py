"""A plugin module that raises while it is imported."""

raise RuntimeError("this plugin is broken on purpose")
