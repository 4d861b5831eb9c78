"""The loop: agent, turns, scheduling, policy, limits, cache, state and events."""
