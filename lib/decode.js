"use strict"
// Values coming back from the core, parsed: its JSON text, or that text with the strings too
// long to go inside it carried alongside.

/**
 * A value from the core: its JSON text, or `[json, places, ...strings]` (see `fromCore`).
 * @typedef {string | string[]} Crossed
 */

/**
 * A value from the core: its JSON text, or `[json, places, ...strings]` when it carries strings
 * too long to go inside one JSON text (see `json::Pieces` in the core): each place is
 * `[index, ...path]`, and the string `strings[index]` goes back at that path.
 * @param {Crossed} crossed
 * @returns {any} the parsed JSON value
 */
function fromCore(crossed) {
  if (typeof crossed === "string") return JSON.parse(crossed)
  const root = JSON.parse(crossed[0])
  let value = root
  for (const [index, ...path] of JSON.parse(crossed[1])) {
    const text = crossed[2 + index]
    if (path.length === 0) {
      value = text
      continue
    }
    let at = root
    for (let i = 0; i < path.length - 1; i++) at = at[path[i]]
    at[path[path.length - 1]] = text
  }
  return value
}

module.exports = { fromCore }
