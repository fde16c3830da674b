"""`staff bench`: what users wait on, measured side by side with the baseline they would otherwise pick."""
