"""Who may do what: the authorization backends (OpenFGA, or allow-all when no identity provider is configured),
the OpenFGA authorization model, and the checks the API asks them. Grants themselves are events in the log;
OpenFGA holds their projection."""
