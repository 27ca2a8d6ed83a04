"""What keeps stored data private and its history tamper-evident: keys, sealing,
redaction, the hash chain and the archive's codec. Below storage: it knows no database."""
