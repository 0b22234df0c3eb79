"""A module given to --plugin that forgot @hookimpl: it defines no optmap hooks."""


def optmap_register_workloads(register):
    register("forgotten", lambda *, batch: None)
