"""What only the SQLite backend needs: its writer thread, group commit, WAL switch and
search index."""
