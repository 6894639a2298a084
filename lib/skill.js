"use strict"
// Skills (SPEC §3): `loadSkills`, `listSkills`.

const { native } = require("./native.js")
const { encode } = require("./stringify.js")
const { wrapNative } = require("./core-tools.js")

/** @typedef {import("../index").SkillDef} SkillDef */

/** @typedef {import("../index").LoadSkillsOptions} LoadSkillsOptions */

/** @typedef {import("../index").SkillInfo} SkillInfo */

/**
 * A candidate that did not become a skill, and why.
 * @typedef {{ location: string, reason: string }} SkillSkip
 */

/**
 * What `listSkills` answers: every skill found (unfiltered) and every rejected candidate.
 * @typedef {{ skills: SkillInfo[], skipped: SkillSkip[] }} SkillInventory
 */

/**
 * What `loadSkills` answers: the skills, the one `skill` tool over them, the prompt catalog.
 * @typedef {{ skills: Record<string, SkillInfo>, tool: import("./core-tools.js").Tool, prompt(): string }} SkillSource
 */

/**
 * The JSON of the options the core reads, from a path, a list of paths or an options object.
 * @param {string} where the caller's name, for the error
 * @param {string | string[] | LoadSkillsOptions} input
 * @returns {string}
 */
function skillOptions(where, input) {
  /** @type {LoadSkillsOptions} */
  const opts = typeof input === "string" || Array.isArray(input) ? { dirs: input } : input
  if (opts === null || typeof opts !== "object") throw new TypeError(`${where}: expected a path, an array of paths or an options object`)
  return encode({ dirs: opts.dirs, skills: opts.skills, filter: opts.filter, sampleLimit: opts.sampleLimit })
}

/**
 * A SkillInfo with the reference's keys, in its order (`description` present even when unset).
 * @param {any} s a skill as parsed from the core's JSON
 * @returns {SkillInfo}
 */
function skillInfo(s) {
  /** @type {SkillInfo} */
  const info = { name: s.name, description: s.description, location: s.location, content: s.content, origin: s.origin }
  if (s.origin === "logical") {
    info.resources = s.resources
    info.base = s.base
  }
  return info
}

/**
 * @param {string | string[] | LoadSkillsOptions} input
 * @returns {SkillSource}
 */
function loadSkills(input) {
  const source = native.skillsLoad(skillOptions("loadSkills", input))
  const skills = JSON.parse(source.skills())
  for (const name of Object.keys(skills)) skills[name] = skillInfo(skills[name])
  return {
    skills,
    tool: wrapNative(source.tool()),
    prompt() {
      return source.prompt()
    },
  }
}

/**
 * @param {string | string[] | LoadSkillsOptions} input
 * @returns {SkillInventory}
 */
function listSkills(input) {
  const inv = JSON.parse(native.skillsList(skillOptions("listSkills", input)))
  return { skills: inv.skills.map(skillInfo), skipped: inv.skipped }
}

module.exports = { loadSkills, listSkills }
