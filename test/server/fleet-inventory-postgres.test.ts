import { inventoryCase } from './fleet-inventory-case.js';

inventoryCase('postgres');
