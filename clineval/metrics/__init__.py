"""clineval.metrics"""
