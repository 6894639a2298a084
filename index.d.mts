// Type declarations for the ES module entry (index.mjs): the same as index.d.ts, whose
// declarations these re-export, plus the default export (the CommonJS exports object).
export * from "./index.js"
import * as toolnexus from "./index.js"
export default toolnexus
