"use strict"
// The built-in tools (SPEC §4A).

const { native } = require("./native.js")
const { encode } = require("./crossing.js")
const { wrapNative } = require("./core-tools.js")

// `undefined` crosses as nothing; `null` fails as reading a field of it does.
const builtinsJson = (cfg) => {
  if (cfg === null) throw new TypeError("Cannot read properties of null (reading 'disabled')")
  return cfg === undefined ? undefined : encode(cfg)
}

const createBuiltinTools = () => native.createBuiltinTools().map(wrapNative)
const selectBuiltins = (cfg) => native.selectBuiltins(builtinsJson(cfg)).map(wrapNative)
const builtinsEnabled = (cfg) => native.builtinsEnabled(builtinsJson(cfg))

module.exports = { createBuiltinTools, selectBuiltins, builtinsEnabled }
