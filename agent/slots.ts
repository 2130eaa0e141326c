import { readlink, rename, rm, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDir, removeLeftoverTemps, tempPathFor } from '../src/shared/durable-file.js';
import { UpdaterError } from '../src/shared/errors.js';

// The A/B slot directory (docs/agent.md, "Slot directory"):
//
//   slot_dir/slot-a, slot_dir/slot-b    the two binaries
//   slot_dir/current -> slot-a          the active slot (a relative symlink)
//
// `current` only ever changes by rename(2) of a fully written symlink over it, so after any
// crash it names either the old or the new slot, never nothing and never a half-made link.

export const SLOT_NAMES = ['slot-a', 'slot-b'] as const;
export type SlotName = (typeof SLOT_NAMES)[number];

export function isSlotName(value: unknown): value is SlotName {
  return value === 'slot-a' || value === 'slot-b';
}

export function otherSlot(slot: SlotName): SlotName {
  return slot === 'slot-a' ? 'slot-b' : 'slot-a';
}

export class SlotDir {
  constructor(readonly dir: string) {}

  path(name: string): string {
    return join(this.dir, name);
  }

  /** Checks the provisioning and clears temporaries a crash left (half-made links, partial state files). */
  async open(): Promise<SlotName> {
    try {
      if (!(await stat(this.dir)).isDirectory()) throw new Error('not a directory');
    } catch (err) {
      throw new UpdaterError('AGENT_SLOT_DIR_INVALID', `slot_dir ${this.dir}: ${(err as Error).message}`);
    }
    await removeLeftoverTemps(this.dir);
    return this.active();
  }

  /** The slot `current` names; it must be one of the two slots and a regular file. */
  async active(): Promise<SlotName> {
    let target: string;
    try {
      target = await readlink(this.path('current'));
    } catch (err) {
      throw new UpdaterError('AGENT_SLOT_DIR_INVALID',
        `${this.path('current')} must be a symlink to slot-a or slot-b (provision the device with its binary as slot-a): ${(err as Error).message}`);
    }
    if (!isSlotName(target)) {
      throw new UpdaterError('AGENT_SLOT_DIR_INVALID', `${this.path('current')} points at ${JSON.stringify(target)}, not slot-a or slot-b`);
    }
    try {
      if (!(await stat(this.path(target))).isFile()) throw new Error('not a regular file');
    } catch (err) {
      throw new UpdaterError('AGENT_SLOT_DIR_INVALID', `the active slot ${target}: ${(err as Error).message}`);
    }
    return target;
  }

  /** Points `current` at `slot` atomically: a new link under a temporary name renamed over the old one. */
  async activate(slot: SlotName): Promise<void> {
    const temp = tempPathFor(this.dir);
    await symlink(slot, temp);
    try {
      await rename(temp, this.path('current'));
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    await fsyncDir(this.dir);
  }
}
