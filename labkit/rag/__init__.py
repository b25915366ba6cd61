"""Lesson 02, part B: a FinanceBench-style RAG pipeline over fictional annual-report PDFs.

- `labkit.rag.companies`: the invented companies and the figures their reports print.
- `labkit.rag.reports`: what each fictional annual report prints, page by page (below both writers).
- `labkit.rag.filings`: the generator of the fictional filings and the question file (``python -m labkit.rag.filings``).
- `labkit.rag.questions`: the question set in FinanceBench's schema and its adapter
  (zero-based ``evidence_page_num`` becomes one-based ``source_page`` once, at load).
- `labkit.rag.index`: the loader and the persistent FAISS index with its descriptor.
- `labkit.rag.answer`: ``answer_with_rag(question, *, k=5)`` with a BM25 reranker and the naive baseline.
- `labkit.rag.metrics`: correctness, faithfulness and page-hit@k per question, and one-variable experiments.
- `labkit.rag.runs`: the lesson's authored and captured runs (``python -m labkit.rag.runs --authored|--captured``);
  `labkit.rag.replies` holds the authored replies.
- `labkit.rag.retrievers`: FAISS, FAISS + BM25 rerank and hybrid fusion side by side, ranking distinct pages,
  with page-hit intervals and ties.
- `labkit.rag.lesson`: the few calls notebook 02 part B makes (tables, experiments, plot).
- `labkit.rag.findings`: the sentences notebook 02 part B renders from its measurements, verdicts by the
  interval rule, so that no figure is typed into its prose.
- `labkit.rag.financebench`: the same retrievers on a FinanceBench folder (``python -m labkit.rag.financebench``),
  and the results file a notebook renders real figures from.

Nothing heavy is imported here: each module imports pandas, FAISS or LangChain where it uses them.
"""
