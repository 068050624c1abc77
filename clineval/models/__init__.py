"""clineval.models"""
