"""The administrators' reports: what they read before they trust the advisor.

``accuracy`` (predictions against actual runtimes, calibration of the quantiles), ``limits``
(requested against used time, and what the advisor's limits saved and cost), ``nodes`` and
``models`` (the inventory the predictions stand on).  The modules are pure over rows that
advisor.store.reports reads (``classes`` is the nodes report), and each returns the one shape
of ``document`` (Report); ``plots`` draws with matplotlib, imported only when asked.  The
command's use case is advisor.services.report.
"""
