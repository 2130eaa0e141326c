import { enrollmentAttacksCase } from './enrollment-attacks-case.js';

// Issue 36's enrollment attacks on sqlite (the case: enrollment-attacks-case.ts).

enrollmentAttacksCase('sqlite');
