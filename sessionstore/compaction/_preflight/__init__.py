"""What runs before every model call: the trigger decision, context hygiene, observation
masking and the fixed costs every call carries."""
