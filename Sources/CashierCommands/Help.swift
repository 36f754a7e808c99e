/// The texts of `cashier-tool --help` and `cashier-tool help COMMAND`.
enum Help {
    static let usage = """
        usage: cashier-tool COMMAND [OPTIONS] ARGUMENTS
               cashier-tool --version

        Inspects and maintains a Cashier cache folder. Run it as `swift run cashier-tool`
        inside the Cashier package, or as `swift package cashier` from a package that
        depends on Cashier.

        commands:
          list DIR [--sort key|size|age|expiry] [--json]
                                   one row per entry: key, type, codec, versions, size, age, expiry, lock, status
          show DIR KEY [--json]    an entry's metadata and its payload
          stats DIR [--json]       counts and bytes: entries, expired, locked, damaged; largest and oldest
          verify DIR [--json]      checks every entry's header and checksum (exit 1 when any is damaged)
          report DIR [--output FILE] [--size-limit BYTES]
                                   one HTML page: summary, charts, PNG thumbnails, a sortable entry table
          prune DIR [--expired] [--damaged] [--max-size BYTES] [--dry-run] [--json]
                                   removes expired or damaged entries, or least recently used ones down to BYTES
          remove DIR KEY [--force] removes one entry (a locked one only with --force)
          demo [DIR]               fills a demo cache through the library and lists it
          help [COMMAND]           this text, or one command's

        --version prints the tool's version, which is the version of Cashier it was built from.

        Exit status: 0 success, 1 damage found or the command failed (no such key, a locked
        entry without --force), 2 usage error or a DIR that is missing or not a folder.
        """

    static let commands: [String: String] = [
        "list": """
        usage: cashier-tool list DIR [--sort key|size|age|expiry] [--json]

        Lists every entry in DIR, one row each: key, value type, codec, schema version,
        app version, size, age (since the last write), time to expiry or "never",
        locked, and status: valid, expired or damaged (bad header or checksum). In a
        folder with a store (store.sqlite), a LOCATION column says where each entry is:
        a row of the store (a small entry) or a file.

          --sort key      by key (the default)
          --sort size     largest first
          --sort age      oldest first
          --sort expiry   soonest to expire first; entries that never expire last
          --json          one JSON document instead of the table
        """,
        "show": """
        usage: cashier-tool show DIR KEY [--json]

        Shows the entry stored for KEY: its metadata, then its payload: JSON
        pretty-printed, a property list as XML, raw bytes as a hex dump of the
        first 256 bytes with the total length, a PNG as its dimensions and length.
        Exit status 1 when there is no entry for KEY or it is damaged.

          --json          one JSON document instead of text
        """,
        "stats": """
        usage: cashier-tool stats DIR [--json]

        Entry count and total bytes; expired, locked and damaged counts and bytes;
        the largest entries and the oldest one. With a store (store.sqlite): how many
        entries and bytes are rows and how many files, and the store's bytes on disk.

          --json          one JSON document instead of text
        """,
        "verify": """
        usage: cashier-tool verify DIR [--json]

        Reads every entry in DIR, its files and the rows of its store (store.sqlite),
        and checks each one's header and checksum, and the store's structure (SQLite's
        quick_check). Prints each damaged file, row or store and why. Exit status 0 when
        all are sound, 1 when any is damaged.
        A folder with no cache entries is reported as such ("nothing to verify"), with
        exit status 0: an empty cache is sound, but check that DIR is the cache's folder.

          --json          one JSON document instead of text
        """,
        "report": """
        usage: cashier-tool report DIR [--output FILE] [--size-limit BYTES]

        Writes one self-contained HTML page about DIR that opens offline in any browser:
        a summary (entries, bytes, expired, locked and damaged counts and bytes), bytes by
        value type and by age as charts, PNG payloads as thumbnails (at most 48, each up to
        48 KiB), and the table `list` prints: click a column to sort it as `list --sort`
        does, type part of a key to filter; expired and damaged rows are marked. It reads
        DIR as `list` does and changes nothing in it, not even access times.

          --output FILE        write the page to FILE (not inside DIR); without it the page
                               goes to standard output, which must not be a terminal
          --size-limit BYTES   the cache's diskSizeLimit (K, M, G suffixes: powers of 1024),
                               to show how much of it is used

        Opened as FILE#sort=size (or key, age, expires, …, with -reversed) or
        FILE#filter=TEXT, the page starts sorted or filtered.
        """,
        "prune": """
        usage: cashier-tool prune DIR [--expired] [--damaged] [--max-size BYTES] [--dry-run] [--json]

        Removes entries and reports what it removed (count and bytes). At least one of:

          --expired          expired entries (locked entries never expire)
          --damaged          entries (files or rows) whose header or checksum is bad, and
                             a store (store.sqlite) that does not open, set aside
                             as store.sqlite.damaged (the cache starts a fresh one)
          --max-size BYTES   least recently used entries until DIR's entries hold at most
                             BYTES (K, M, G suffixes: powers of 1024); damaged ones go
                             first, locked entries last
          --dry-run          report what would be removed, remove nothing
          --json             one JSON document instead of text
        """,
        "remove": """
        usage: cashier-tool remove DIR KEY [--force]

        Removes the entry stored for KEY. Exit status 1 when there is none, or when
        the entry is locked (pinned by the app: it never expires) and --force is not given.

          --force         remove the entry even when it is locked
        """,
        "demo": """
        usage: cashier-tool demo [DIR]

        Fills a demo cache through the library's public API (a versioned key, an
        expiring key, a locked one, a property list, raw bytes), reads the values back,
        simulates an app update with a changed model (an old entry discarded, another
        migrated), then lists the folder. DIR defaults to Cashier/demo in the user's
        cache folder ($XDG_CACHE_HOME or ~/.cache on Linux), which is printed. Each run
        first removes what a previous demo left in the folder, so runs neither pile up
        folders nor differ; a folder holding other files or other keys' entries is refused.
        """,
        "help": """
        usage: cashier-tool help [COMMAND]

        Prints the usage of cashier-tool, or of one command.
        """,
    ]

    static func text(for command: String?) -> String {
        guard let command, let text = commands[command] else { return usage }
        return text
    }
}
