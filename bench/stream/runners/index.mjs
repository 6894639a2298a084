// The stream bench's runners, in report order; the floor first (every ratio is to it).
export const RUNNERS = ["floor", "toolnexus", "ai-sdk"]
