"""Staff-only tools: grading, solution markers, submission intake. Never shipped to students."""
