"use strict"
// The addon, as the loader finds it (loader.js), with this environment's warnings routed.

const native = require("../loader.js")

// The core's `[toolnexus] …` warnings, through whatever `console.warn` is at that moment.
// (It answers nothing: a warning needs no reply.)
native.setWarn(/** @returns {undefined} */ (text) => {
  console.warn(text)
})

module.exports = { native }
