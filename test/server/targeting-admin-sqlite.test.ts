import { targetingCase } from './targeting-admin-case.js';

targetingCase('sqlite');
