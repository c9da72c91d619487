"""ember.utils: data loading (``ember.utils.data``) and benchmarking (``ember.utils.benchmark``)."""
