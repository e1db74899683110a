"""The broker (later issue)."""
