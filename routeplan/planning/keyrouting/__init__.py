"""Key routing: every key group (and every hot key) gets its workers (papers 000, 001, 003)."""
