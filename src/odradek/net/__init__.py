"""Network helpers below the broker's server: ``sendfile`` (zero-copy file → socket sends)."""
