"""Built-in optmap plugins, registered through the same entry-point group as third-party ones."""
