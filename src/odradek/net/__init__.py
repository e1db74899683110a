"""asyncio shells around protocol connections (issue 3)."""
