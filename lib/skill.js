"use strict"
// Skills (SPEC §3): `loadSkills`, `listSkills`.

const { native } = require("./native.js")
const { encode } = require("./crossing.js")
const { wrapNative } = require("./core-tools.js")

function skillOptions(where, input) {
  const opts = typeof input === "string" || Array.isArray(input) ? { dirs: input } : input
  if (opts === null || typeof opts !== "object") throw new TypeError(`${where}: expected a path, an array of paths or an options object`)
  return encode({ dirs: opts.dirs, skills: opts.skills, filter: opts.filter, sampleLimit: opts.sampleLimit })
}

/** A SkillInfo with the reference's keys, in its order (`description` present even when unset). */
function skillInfo(s) {
  const info = { name: s.name, description: s.description, location: s.location, content: s.content, origin: s.origin }
  if (s.origin === "logical") {
    info.resources = s.resources
    info.base = s.base
  }
  return info
}

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

function listSkills(input) {
  const inv = JSON.parse(native.skillsList(skillOptions("listSkills", input)))
  return { skills: inv.skills.map(skillInfo), skipped: inv.skipped }
}

module.exports = { loadSkills, listSkills }
