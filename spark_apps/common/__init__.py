"""Small library shared by the Spark jobs: session building, settings, reports."""
