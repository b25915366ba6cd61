"""``python -m labkit.rag.financebench DIR``: see `labkit.rag.financebench.command`."""

from labkit.rag.financebench.command import main

raise SystemExit(main())
