import { fleetDisabledCase, inventoryCase } from './fleet-inventory-case.js';

inventoryCase('sqlite');
fleetDisabledCase();
