"""clineval.data"""
