/**
 * The id of the command this process ran (`onboard`, `war:list`…), once oclif has picked it. bin/run.js
 * reads it after the run to tell the V8 code cache which command's functions it now holds.
 */
export const ranCommand: {id?: string} = {}
