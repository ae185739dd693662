"""From a question to ranked passages: retrievers, fusion, postprocessors, query transforms and the trace."""
