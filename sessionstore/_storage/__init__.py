"""The one seam into the database: the `Database` protocol, what every backend shares
(migrations, row SQL, driver errors, loops) and one folder per backend."""
