"""Authentication: listeners and their security protocols, TLS, SASL (PLAIN, SCRAM) and the
per-connection authenticator that sets ``broker.principal.CLIENT_PRINCIPAL``."""
