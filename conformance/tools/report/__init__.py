"""The capability matrix, for whoever reads a run's results: its model built from results files
(matrix: root causes counted in their own rows), its Markdown, HTML (matrix.css, matrix.js) and
Beam-YAML renderings, and Beam's own published matrix as data (published) with its disagreements
with ours (beam_comparison)."""
