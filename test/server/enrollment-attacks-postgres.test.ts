import { enrollmentAttacksCase } from './enrollment-attacks-case.js';

// Issue 36's enrollment attacks on postgres (the case: enrollment-attacks-case.ts).

enrollmentAttacksCase('postgres');
