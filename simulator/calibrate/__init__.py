"""Calibration: fit hardware and stack constants to measurements (``clustersim calibrate``).

- :mod:`.rows`: measurement rows from CSV files, the shipped validation sets, nccl-tests logs;
- :mod:`.params`: the constants to free (``gpu:NAME.compute.gemm_peak_fraction``), their
  bounds from the spec schema, and the overlay a vector of values makes;
- :mod:`.predict`: predictions of the rows under a candidate overlay, sessions cached;
- :mod:`.fit`: bounded robust least squares, identifiability, uncertainty, cross-validation;
- :mod:`.output`: the overlay file, the report tables and JSON;
- :mod:`.cli`: the command.

docs/calibration.md describes the method and the overlay format. Nothing is imported here,
so that ``clustersim`` starts without scipy.optimize; import from the modules.
"""
