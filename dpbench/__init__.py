"""dpbench: a reproducible benchmark harness for differentially private machine learning.

Layers (each imports only layers to its left):
data -> privacy -> learn -> methods -> attacks -> studies -> results / plot / report.
"""

__version__ = "0.1.0"
