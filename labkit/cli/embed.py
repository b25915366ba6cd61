"""`labkit embed`: recompute a registered embedding set with the real model, or check the saved one against it."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="recompute or check a set of saved embeddings (needs the [embed] extra)",
        description="Recompute the vectors of a registered embedding set with all-MiniLM-L6-v2 and write its "
        "saved-embeddings file, or, with --check, compare the saved vectors with a fresh computation and exit 1 "
        "if any differs by more than the tolerance or a text of the set is not saved.",
        epilog="examples:\n  labkit embed rag-docs\n  labkit embed rag-docs --check",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", metavar="NAME", help="the embedding set, as registered in labkit.embeddings")
    parser.add_argument(
        "--check", action="store_true", help="compare saved with fresh vectors instead of writing; exit 1 on a mismatch"
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=None,
        metavar="X",
        help="largest absolute difference per component that still matches (default 1e-5)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from labkit.embeddings import TOLERANCE, check_embeddings, embedding_set, save_embeddings

    texts, path = embedding_set(args.name)
    if args.check:
        tolerance = TOLERANCE if args.tolerance is None else args.tolerance
        result = check_embeddings(path, texts, tolerance=tolerance)
        print(result.summary())
        return 0 if result.ok else 1
    save_embeddings(texts, path, overwrite=True)
    print(f"{path}: wrote {len(set(texts))} vectors for the embedding set {args.name!r}")
    return 0
