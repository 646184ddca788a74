import type { ProfileFieldDefinition } from '../../db/schema/profiles.ts';

export interface ProfileTypeTemplate {
  slug: string;
  name: string;
  description: string;
  fields: ProfileFieldDefinition[];
}

const US_STATE_HINT = 'Two-letter state or region codes, e.g. CA, NY, TX';

const contact = (): ProfileFieldDefinition[] => [
  { name: 'website', type: 'url', label: 'Website' },
  { name: 'email', type: 'email', label: 'Contact email' },
  { name: 'phone', type: 'string', label: 'Phone' },
  { name: 'address', type: 'string', label: 'Street address' },
  { name: 'city', type: 'string', label: 'City' },
  { name: 'region', type: 'string', label: 'State / region' },
  { name: 'country', type: 'string', label: 'Country' },
];

/**
 * Built-in profile type templates. A template is a ready-made body for POST /api/profile-types
 * (copy `name`, `slug`, `description` and `fields`, then adjust).
 */
export const profileTypeTemplates: readonly ProfileTypeTemplate[] = [
  {
    slug: 'lender',
    name: 'Lender',
    description: 'Business or consumer lenders: loan products, ticket sizes, rates and licensing.',
    fields: [
      { name: 'companyName', type: 'string', label: 'Company name', required: true },
      {
        name: 'lenderType',
        type: 'string',
        label: 'Lender type',
        enum: [
          'Bank',
          'Credit Union',
          'Online Lender',
          'Private Lender',
          'CDFI',
          'Mortgage Broker',
          'Hard Money Lender',
        ],
      },
      {
        name: 'loanTypes',
        type: 'array',
        label: 'Loan types',
        items: { type: 'string' },
        description: 'e.g. SBA 7(a), Term Loan, Line of Credit, Equipment Financing, Commercial Real Estate',
      },
      { name: 'minLoanAmount', type: 'number', label: 'Minimum loan amount (USD)' },
      { name: 'maxLoanAmount', type: 'number', label: 'Maximum loan amount (USD)' },
      {
        name: 'interestRateRange',
        type: 'string',
        label: 'Interest rate range',
        description: 'As published, e.g. "6.5% - 11%"',
      },
      { name: 'minCreditScore', type: 'integer', label: 'Minimum credit score' },
      { name: 'minTimeInBusinessMonths', type: 'integer', label: 'Minimum time in business (months)' },
      { name: 'fundingTimeDays', type: 'integer', label: 'Typical days to funding' },
      {
        name: 'licensedStates',
        type: 'array',
        label: 'Licensed states',
        items: { type: 'string' },
        description: US_STATE_HINT,
      },
      { name: 'nmlsId', type: 'string', label: 'NMLS ID' },
      ...contact(),
    ],
  },
  {
    slug: 'restaurant',
    name: 'Restaurant',
    description: 'Restaurants, cafés and bars: cuisine, price level, ratings and services.',
    fields: [
      { name: 'name', type: 'string', label: 'Name', required: true },
      { name: 'cuisines', type: 'array', label: 'Cuisines', items: { type: 'string' } },
      { name: 'priceRange', type: 'string', label: 'Price range', enum: ['$', '$$', '$$$', '$$$$'] },
      { name: 'rating', type: 'number', label: 'Average rating (0–5)' },
      { name: 'reviewCount', type: 'integer', label: 'Number of reviews' },
      { name: 'openingHours', type: 'string', label: 'Opening hours' },
      { name: 'seatingCapacity', type: 'integer', label: 'Seating capacity' },
      { name: 'acceptsReservations', type: 'boolean', label: 'Takes reservations' },
      { name: 'offersDelivery', type: 'boolean', label: 'Offers delivery' },
      { name: 'offersCatering', type: 'boolean', label: 'Offers catering' },
      { name: 'ownerName', type: 'string', label: 'Owner / manager' },
      { name: 'locationCount', type: 'integer', label: 'Number of locations' },
      ...contact(),
    ],
  },
  {
    slug: 'software-company',
    name: 'Software company',
    description: 'SaaS and software vendors: product, size, funding and technology.',
    fields: [
      { name: 'companyName', type: 'string', label: 'Company name', required: true },
      { name: 'productName', type: 'string', label: 'Main product' },
      { name: 'category', type: 'string', label: 'Category', description: 'e.g. CRM, HR, DevOps, Analytics' },
      { name: 'description', type: 'string', label: 'One-line description' },
      { name: 'foundedYear', type: 'integer', label: 'Founded' },
      { name: 'employeeCount', type: 'integer', label: 'Employees' },
      {
        name: 'fundingStage',
        type: 'string',
        label: 'Funding stage',
        enum: ['Bootstrapped', 'Pre-seed', 'Seed', 'Series A', 'Series B', 'Series C+', 'Public', 'Acquired'],
      },
      { name: 'totalFundingUsd', type: 'number', label: 'Total funding (USD)' },
      {
        name: 'pricingModel',
        type: 'string',
        label: 'Pricing model',
        enum: ['Free', 'Freemium', 'Subscription', 'Usage-based', 'One-time license', 'Custom'],
      },
      { name: 'startingPriceUsd', type: 'number', label: 'Starting price per month (USD)' },
      { name: 'techStack', type: 'array', label: 'Technologies', items: { type: 'string' } },
      { name: 'integrations', type: 'array', label: 'Integrations', items: { type: 'string' } },
      { name: 'headquarters', type: 'string', label: 'Headquarters' },
      { name: 'ceoName', type: 'string', label: 'CEO' },
      { name: 'linkedinUrl', type: 'url', label: 'LinkedIn page' },
      { name: 'website', type: 'url', label: 'Website' },
      { name: 'email', type: 'email', label: 'Contact email' },
      { name: 'phone', type: 'string', label: 'Phone' },
    ],
  },
  {
    slug: 'law-firm',
    name: 'Law firm',
    description: 'Law firms and solo practices: practice areas, size and admissions.',
    fields: [
      { name: 'firmName', type: 'string', label: 'Firm name', required: true },
      { name: 'practiceAreas', type: 'array', label: 'Practice areas', items: { type: 'string' } },
      { name: 'attorneyCount', type: 'integer', label: 'Number of attorneys' },
      { name: 'managingPartner', type: 'string', label: 'Managing partner' },
      {
        name: 'barAdmissions',
        type: 'array',
        label: 'Bar admissions',
        items: { type: 'string' },
        description: US_STATE_HINT,
      },
      { name: 'officeLocations', type: 'array', label: 'Office locations', items: { type: 'string' } },
      { name: 'languages', type: 'array', label: 'Languages spoken', items: { type: 'string' } },
      { name: 'foundedYear', type: 'integer', label: 'Founded' },
      { name: 'freeConsultation', type: 'boolean', label: 'Free initial consultation' },
      {
        name: 'feeStructure',
        type: 'array',
        label: 'Fee structures',
        items: { type: 'string', enum: ['Hourly', 'Flat fee', 'Contingency', 'Retainer'] },
      },
      ...contact(),
    ],
  },
  {
    slug: 'real-estate-agency',
    name: 'Real estate agency',
    description: 'Brokerages and agents: service areas, specialties, listings and licensing.',
    fields: [
      { name: 'agencyName', type: 'string', label: 'Agency name', required: true },
      { name: 'brokerName', type: 'string', label: 'Principal broker' },
      { name: 'licenseNumber', type: 'string', label: 'License number' },
      { name: 'serviceAreas', type: 'array', label: 'Service areas', items: { type: 'string' } },
      {
        name: 'specialties',
        type: 'array',
        label: 'Specialties',
        items: {
          type: 'string',
          enum: [
            'Residential',
            'Commercial',
            'Luxury',
            'Rentals',
            'Property Management',
            'Land',
            'Industrial',
            'New Construction',
          ],
        },
      },
      { name: 'agentCount', type: 'integer', label: 'Number of agents' },
      { name: 'activeListings', type: 'integer', label: 'Active listings' },
      { name: 'averageListingPrice', type: 'number', label: 'Average listing price' },
      { name: 'yearsInBusiness', type: 'integer', label: 'Years in business' },
      {
        name: 'franchise',
        type: 'string',
        label: 'Franchise / network',
        description: 'e.g. RE/MAX, Keller Williams; empty when independent',
      },
      ...contact(),
    ],
  },
  {
    slug: 'manufacturer',
    name: 'Manufacturer',
    description: 'Manufacturers and suppliers: products, capacity, certifications and markets.',
    fields: [
      { name: 'companyName', type: 'string', label: 'Company name', required: true },
      {
        name: 'industry',
        type: 'string',
        label: 'Industry',
        description: 'e.g. Metal fabrication, Plastics, Electronics, Food & beverage',
      },
      { name: 'products', type: 'array', label: 'Products', items: { type: 'string' } },
      {
        name: 'capabilities',
        type: 'array',
        label: 'Capabilities',
        items: { type: 'string' },
        description: 'e.g. CNC machining, injection moulding',
      },
      {
        name: 'certifications',
        type: 'array',
        label: 'Certifications',
        items: { type: 'string' },
        description: 'e.g. ISO 9001, AS9100, IATF 16949',
      },
      { name: 'employeeCount', type: 'integer', label: 'Employees' },
      { name: 'annualRevenueUsd', type: 'number', label: 'Annual revenue (USD)' },
      { name: 'minimumOrderQuantity', type: 'integer', label: 'Minimum order quantity' },
      { name: 'leadTimeDays', type: 'integer', label: 'Typical lead time (days)' },
      { name: 'exportMarkets', type: 'array', label: 'Export markets', items: { type: 'string' } },
      { name: 'foundedYear', type: 'integer', label: 'Founded' },
      ...contact(),
    ],
  },
  {
    slug: 'medical-practice',
    name: 'Medical practice',
    description: 'Clinics and practices: specialties, providers, insurance and patient intake.',
    fields: [
      { name: 'practiceName', type: 'string', label: 'Practice name', required: true },
      { name: 'specialties', type: 'array', label: 'Specialties', items: { type: 'string' } },
      { name: 'providerCount', type: 'integer', label: 'Number of providers' },
      { name: 'npiNumber', type: 'string', label: 'NPI number' },
      { name: 'acceptedInsurance', type: 'array', label: 'Accepted insurance', items: { type: 'string' } },
      { name: 'acceptingNewPatients', type: 'boolean', label: 'Accepting new patients' },
      { name: 'offersTelehealth', type: 'boolean', label: 'Offers telehealth' },
      { name: 'languages', type: 'array', label: 'Languages spoken', items: { type: 'string' } },
      { name: 'openingHours', type: 'string', label: 'Opening hours' },
      ...contact(),
    ],
  },
];
