from sbert.cli import main

raise SystemExit(main())
