"""The conductor: orchestration of builds and moves between the API and the compute hosts."""
