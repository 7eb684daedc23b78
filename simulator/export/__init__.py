"""Files clustersim writes: Chrome/Perfetto traces of simulated steps, the rows a timeline adds
(in-layer communication, the step shown), starter scenarios (``clustersim init``), and the
shared checks and atomic writes every output goes through (:mod:`simulator.export.atomic`)."""
