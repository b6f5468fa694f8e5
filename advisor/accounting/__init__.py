"""Learning from accounting: sacct windows, saved sacct dumps and SWF logs become observations.

``swf`` and ``sacct_file`` read logs one line at a time; ``mapping`` turns a finished job into
an observation; ``ingest`` stores a batch of jobs and everything learned from them in one
transaction; ``update`` is the use case behind ``advisor update``.
"""
