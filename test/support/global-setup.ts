// Placeholder: the database harness replaces this with the per-run template database.
export default function setup() {}
