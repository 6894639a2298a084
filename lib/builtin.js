"use strict"
// The built-in tools (SPEC §4A).

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { wrapNative } = require("./core-tools.js")

/**
 * The switch (and per-tool filter) for the built-in tools.
 * @typedef {boolean | { enabled?: boolean, disabled?: boolean, tools?: Record<string, boolean> }} BuiltinsConfig
 */

// `undefined` crosses as nothing; `null` fails as reading a field of it does.
/**
 * @param {BuiltinsConfig | null | undefined} cfg
 * @returns {string | undefined}
 */
const builtinsJson = (cfg) => {
  if (cfg === null) throw new TypeError("Cannot read properties of null (reading 'disabled')")
  return cfg === undefined ? undefined : encode(cfg)
}

/** @returns {import("./core-tools.js").Tool[]} */
const createBuiltinTools = () => native.createBuiltinTools().map(wrapNative)
/**
 * @param {BuiltinsConfig | undefined} cfg
 * @returns {import("./core-tools.js").Tool[]}
 */
const selectBuiltins = (cfg) => native.selectBuiltins(builtinsJson(cfg)).map(wrapNative)
/**
 * @param {BuiltinsConfig | undefined} cfg
 * @returns {boolean}
 */
const builtinsEnabled = (cfg) => native.builtinsEnabled(builtinsJson(cfg))

module.exports = { createBuiltinTools, selectBuiltins, builtinsEnabled }
