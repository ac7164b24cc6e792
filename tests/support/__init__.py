"""The one helper layer of the suite: section parsing and copy-runs, reference weights, common generators."""
