// Deliberate defects, all off unless `--defect NAME` is given at start. Each breaks exactly one rule this
// pipeline otherwise passes, so an expectations file can be shown reading a real failure as expected
// (expectations-defect.toml) and the run shown failing without that entry; nothing else changes.

/** Each defect's name, and what it breaks (shown by `--help` and in the line the driver prints at start). */
export const DEFECTS = {
  "duplicate-names":
    "D5.4: a second tool registered under a name already taken replaces the first instead of refusing the instance",
} as const;

export type Defect = keyof typeof DEFECTS;

export function isDefect(name: string): name is Defect {
  return Object.hasOwn(DEFECTS, name);
}
