"""The event-driven simulator: the production round function with a simulated clock and a
simulated executor."""
