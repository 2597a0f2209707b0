"""Tools (`app/tools`): the API, the registry, built-ins, plugins, the sandbox."""
