"""Bring your own filings: part B's retrievers measured on a folder laid out as FinanceBench's repository.

FinanceBench (Islam et al. 2023, ``patronus-ai/financebench``) publishes its questions and document list as
JSON Lines under ``data/`` and the filings as ``pdfs/<doc_name>.pdf``. With a clone and the ``embed`` extra::

    python -m labkit.rag.financebench DIR --k 1 3 5 12

measures page-hit@k per retriever, question kind and store, and writes the figures per question to a
results file. The parts:

- `labkit.rag.financebench.names`: the document names, parsed by the rule FinanceBench's own data follows;
- `labkit.rag.financebench.folder`: the folder, its questions, its document list and the PDFs present;
- `labkit.rag.financebench.cache`: parsed pages and embedding vectors, cached (``$LABKIT_FINANCEBENCH_CACHE``);
- `labkit.rag.financebench.measure`: the measurement itself;
- `labkit.rag.financebench.results`: the results file, and the tables and sentences a lesson renders from it;
- `labkit.rag.financebench.command`: the command line.

Nothing heavy is imported here.
"""
